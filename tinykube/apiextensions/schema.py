"""A CRD version's structural schema applied to custom resources: pruning, defaulting, validation, CEL rules.

`Schema.compile(openAPIV3Schema)` once per CRD version; then, per request, in upstream's order:

    unknown = schema.prune(obj)          # decode: drop unknown fields (paths for fieldValidation Strict/Warn)
    schema.default(obj)                  # decode: structural defaults (also on every read from storage)
    errs = schema.validate(obj, old)     # strategy: OpenAPI, embedded resources, list types, then CEL rules

and for reads from storage `prune(obj, drop_invalid_metadata=True)` then `default(obj)`. Status updates use
`validate_status` (upstream validates only `status` against its schema there, and still runs every CEL rule).

The CRD validator asks two more things: `compile_errors` (rules that do not compile, or cost too much) and
`default_value_errors` (a `default` checked against its schema and rules).

Cost limits. Upstream estimates each rule's worst-case cost with cel-go's static estimator (`celcost.py`: the same
model and the same sizes for the data the rule reads), multiplies it by how many times the rule can run (the
product of `maxItems`/`maxProperties` of the lists and maps above it, or, where one is unbounded, as many of the
rule's smallest values as fit in a 3 MiB request), refuses a rule over 10^7 (and a CRD whose rules add up over
10^8), and stops a validation call that spends more than 10^7 at run time. Here the refusals and their messages
are upstream's; at run time a call stops evaluating rules after one second (`RUNTIME_BUDGET_SECONDS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tinykube.api.errors import ErrorType, FieldError
from tinykube.apiextensions import celcost, defaulting, embedded, listtype, openapi, pruning
from tinykube.apiextensions.node import Node, compile_node

if TYPE_CHECKING:  # the CEL engine is imported where a rule is first compiled or run (~0.14 s at start-up)
    from tinykube.apiextensions import celrules

STATIC_COST_LIMIT = 10_000_000  # per expression
STATIC_CRD_COST_LIMIT = 100_000_000  # all the expressions of one schema
_BLOCKING = {ErrorType.NOT_SUPPORTED, ErrorType.REQUIRED, ErrorType.TOO_LONG, ErrorType.TOO_MANY}
BLOCKED_DETAIL = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to complete "
    "validation"
)


def is_blocking(err: FieldError) -> bool:
    """upstream's hasBlockingErr test: errors after which CEL rules are not run."""
    return err.type in _BLOCKING or isinstance(err, openapi.TypeInvalid) or err.type.name == "TYPE_INVALID"


class Schema:
    """A compiled structural schema (see the module docstring for the call order)."""

    __slots__ = ("raw", "root", "rules")

    def __init__(self, raw: dict[str, Any], root: Node, rules: celrules.RuleTree | None) -> None:
        self.raw = raw
        self.root = root
        self.rules = rules

    @classmethod
    def compile(cls, openapi_v3_schema: dict[str, Any]) -> Schema:
        root = compile_node(openapi_v3_schema)
        openapi.attach(root)
        _prune_defaults(root)
        rules = None
        if root.needs_rules:
            from tinykube.apiextensions import celrules

            rules = celrules.build(root, root, resource=True)
        return cls(openapi_v3_schema, root, rules)

    # ---- decoding --------------------------------------------------------------------------------------------------

    def prune(self, obj: dict[str, Any], *, drop_invalid_metadata: bool = False) -> list[str]:
        """Drop unknown fields (and non-nullable nulls) in place; the dropped fields' paths, as upstream reports
        them inside `unknown field "…"`. `drop_invalid_metadata` is for objects read from storage."""
        return pruning.prune(self.root, obj, drop_invalid_metadata=drop_invalid_metadata)

    def default(self, obj: dict[str, Any]) -> None:
        """Apply the schema's defaults in place (after `prune`)."""
        defaulting.default(self.root, obj)

    # ---- validation ------------------------------------------------------------------------------------------------

    def validate_schema(self, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
        """OpenAPI validation (ratcheted against `old`), embedded resources, list-type invariants."""
        run = openapi.Run()
        openapi.validate(self.root, obj, "", run, openapi.MISSING if old is None else old)
        errs = run.errs
        embedded.validate(self.root, obj, None, errs)
        if self.root.needs_listtype and (old is None or not _listtype_errors(self.root, old)):
            listtype.validate(self.root, obj, None, errs)
        return errs

    def validate_rules(self, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
        """The `x-kubernetes-validations` rules (transition rules and ratcheting when `old` is given)."""
        if self.rules is None:
            return []
        from tinykube.apiextensions import celrules

        errs: list[FieldError] = []
        ratchet = celrules.Ratchet(celrules.Correlation(obj, old, self.root)) if old is not None else celrules.Ratchet()
        celrules.evaluate(self.rules, obj, old, None, ratchet, celrules.Budget(), errs)
        return errs

    def validate(
        self, obj: dict[str, Any], old: dict[str, Any] | None = None, *, prior: Iterable[FieldError] = ()
    ) -> list[FieldError]:
        """Everything upstream's strategy checks beyond TypeMeta and the root metadata, in its order. `prior`
        are the caller's errors so far (metadata ...): like these, they keep CEL rules from running."""
        errs = self.validate_schema(obj, old)
        return errs + self._rules_unless_blocked(obj, old, [*prior, *errs])

    def validate_status(
        self, obj: dict[str, Any], old: dict[str, Any], *, prior: Iterable[FieldError] = ()
    ) -> list[FieldError]:
        """A status update: only `status` against its schema (paths `status.…`), list types ratcheted, all rules."""
        errs: list[FieldError] = []
        status_node = (self.root.properties or {}).get("status")
        if status_node is not None and "status" in obj:
            run = openapi.Run("status")
            prior_status = old.get("status", openapi.MISSING) if isinstance(old, dict) else openapi.MISSING
            openapi.validate(status_node, obj["status"], "", run, prior_status)
            errs += run.errs
        if self.root.needs_listtype:
            fresh = _listtype_errors(self.root, obj)
            if fresh and not _listtype_errors(self.root, old):
                errs += fresh
        return errs + self._rules_unless_blocked(obj, old, [*prior, *errs])

    def _rules_unless_blocked(
        self, obj: dict[str, Any], old: dict[str, Any] | None, errs: list[FieldError]
    ) -> list[FieldError]:
        if self.rules is None:
            return []
        if any(is_blocking(e) for e in errs):
            return [FieldError(ErrorType.INVALID, "<nil>", None, BLOCKED_DETAIL)]
        return self.validate_rules(obj, old)


def _listtype_errors(root: Node, value: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    listtype.validate(root, value, None, errs)
    return errs


def _prune_defaults(node: Node) -> None:
    """Defaults are pruned by their own schema when a CRD is loaded (upstream's PruneDefaults)."""
    for child in (*(node.properties or {}).values(), node.additional, node.items):
        if child is None:
            continue
        if child.default is not None and isinstance(child.default, dict | list):
            pruning.prune_value(child, child.default)
        _prune_defaults(child)
    if node.properties:
        node.defaults = tuple((k, node.properties[k].default, n) for k, _, n in node.defaults)


# ---- for the CRD validator -----------------------------------------------------------------------------------------


def default_value_errors(raw: dict[str, Any], value: Any, path: str) -> list[FieldError]:
    """A `default` (at field path `path`, e.g. `...properties[x].default`) against its schema and rules."""
    from tinykube.apiextensions import celrules

    node = compile_node(raw)
    openapi.attach(node)
    run = openapi.Run(path)
    openapi.validate(node, value, "", run)
    if run.errs:
        return run.errs
    tree = celrules.build(node, node, resource=node.embedded) if node.needs_rules else None
    if tree is None:
        return []
    errs: list[FieldError] = []
    budget = celrules.Budget()
    celrules.evaluate(tree, value, value, path, celrules.Ratchet(), budget, errs)
    if not errs:
        celrules.evaluate(tree, value, None, path, celrules.Ratchet(), budget, errs)
    return errs


class _GoJSON:
    """A value that field errors print as given Go JSON text (upstream prints the rule struct with json.Marshal)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _GoJSON) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _go_string(text: str) -> str:
    out = openapi.go_quote(text)
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def rule_value(rule: dict[str, Any]) -> _GoJSON:
    """The internal ValidationRule as upstream's field errors show it."""
    reason, optional = rule.get("reason"), rule.get("optionalOldSelf")
    parts = [
        f'"Rule":{_go_string(str(rule.get("rule") or ""))}',
        f'"Message":{_go_string(str(rule.get("message") or ""))}',
        f'"MessageExpression":{_go_string(str(rule.get("messageExpression") or ""))}',
        f'"Reason":{_go_string(reason) if isinstance(reason, str) else "null"}',
        f'"FieldPath":{_go_string(str(rule.get("fieldPath") or ""))}',
        f'"OptionalOldSelf":{("true" if optional else "false") if isinstance(optional, bool) else "null"}',
    ]
    return _GoJSON("{" + ",".join(parts) + "}")


def cost_message(name: str, cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return (
        f"{name} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, maxProperties, "
        "and maxLength where arrays, maps, and strings are declared)"
    )


class _Costs:
    def __init__(self) -> None:
        self.total = 0
        self.expensive: list[tuple[int, str]] = []

    def observe(self, path: str, cost: int) -> None:
        self.total += cost
        if cost >= STATIC_CRD_COST_LIMIT // 100:
            self.expensive = sorted([*self.expensive, (cost, path)], key=lambda c: -c[0])[:4]


def compile_errors(openapi_v3_schema: dict[str, Any], path: str) -> list[FieldError]:
    """Rules that do not compile, transition rules where old values cannot be correlated, and cost refusals,
    for the schema at field path `path` (e.g. `spec.versions[0].schema.openAPIV3Schema`)."""
    root = compile_node(openapi_v3_schema)
    costs = _Costs()
    errs = _compile_walk(openapi_v3_schema, root, path, cardinality=1, forbid_old=None, resource=True, costs=costs)
    if costs.total > STATIC_CRD_COST_LIMIT:
        detail = "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        errs += [FieldError(ErrorType.FORBIDDEN, p, detail=detail) for _, p in costs.expensive]
        name = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema"
        errs.append(
            FieldError(ErrorType.FORBIDDEN, path, detail=cost_message(name, costs.total, STATIC_CRD_COST_LIMIT))
        )
    return errs


def _child_cardinality(node: Node, cardinality: int | None) -> int | None:
    if cardinality is None:
        return None
    if node.type == "object":
        if node.additional is None:
            return cardinality
        return None if node.max_props is None else cardinality * max(node.max_props, 0)
    if node.type == "array":
        return None if node.max_items is None else cardinality * max(node.max_items, 0)
    return cardinality


def _compile_walk(
    raw: dict[str, Any],
    node: Node,
    path: str,
    *,
    cardinality: int | None,
    forbid_old: str | None,
    resource: bool,
    costs: _Costs,
) -> list[FieldError]:
    errs: list[FieldError] = []
    below = _child_cardinality(node, cardinality)
    raw_props: dict[str, Any] = raw["properties"] if isinstance(raw.get("properties"), dict) else {}
    for name, child in (node.properties or {}).items():
        forbid = forbid_old or (path if node.map_type not in ("", "granular", "atomic") else None)
        errs += _compile_walk(
            raw_props[name], child, f"{path}.properties[{name}]", cardinality=below, forbid_old=forbid,
            resource=child.embedded, costs=costs,
        )  # fmt: skip
    if node.additional is not None and isinstance(raw.get("additionalProperties"), dict):
        errs += _compile_walk(
            raw["additionalProperties"], node.additional, f"{path}.additionalProperties", cardinality=below,
            forbid_old=forbid_old, resource=node.additional.embedded, costs=costs,
        )  # fmt: skip
    if node.items is not None and isinstance(raw.get("items"), dict):
        forbid = forbid_old or (path if node.list_type != "map" else None)
        errs += _compile_walk(
            raw["items"], node.items, f"{path}.items", cardinality=below, forbid_old=forbid,
            resource=node.items.embedded, costs=costs,
        )  # fmt: skip
    return errs + _rule_compile_errors(node, path, cardinality, forbid_old, resource, costs)


def _rule_compile_errors(
    node: Node, path: str, cardinality: int | None, forbid_old: str | None, resource: bool, costs: _Costs
) -> list[FieldError]:
    from tinykube.apiextensions import celrules

    errs: list[FieldError] = []
    times = cardinality if cardinality is not None else celcost.max_cardinality(node)
    for i, rule in enumerate(node.rules):
        if not str(rule.get("rule") or "").strip():
            continue
        at = f"{path}.x-kubernetes-validations[{i}]"
        compiled = celrules.compile_rule(rule, node, resource=resource)
        cost = compiled.cost * times
        if cost > STATIC_COST_LIMIT:
            detail = cost_message("estimated rule cost", cost, STATIC_COST_LIMIT)
            errs.append(FieldError(ErrorType.FORBIDDEN, f"{at}.rule", detail=detail))
        costs.observe(f"{at}.rule", cost)
        if compiled.error is not None:
            errs.append(FieldError(ErrorType.INVALID, f"{at}.rule", rule_value(rule), compiled.error))
        if compiled.message_error is not None:
            errs.append(
                FieldError(ErrorType.INVALID, f"{at}.messageExpression", rule_value(rule), compiled.message_error)
            )
        elif compiled.message_program is not None:
            if compiled.message_cost > STATIC_COST_LIMIT:
                detail = cost_message("estimated messageExpression cost", compiled.message_cost, STATIC_COST_LIMIT)
                errs.append(FieldError(ErrorType.FORBIDDEN, f"{at}.messageExpression", detail=detail))
            costs.observe(f"{at}.messageExpression", compiled.message_cost)
        if compiled.uses_old_self:
            if forbid_old is not None:
                detail = f"oldSelf cannot be used on the uncorrelatable portion of the schema within {forbid_old}"
                errs.append(FieldError(ErrorType.INVALID, f"{at}.rule", compiled.source, detail))
        elif isinstance(rule.get("optionalOldSelf"), bool):
            detail = "may not be set if oldSelf is not used in rule"
            errs.append(FieldError(ErrorType.INVALID, f"{at}.optionalOldSelf", rule["optionalOldSelf"], detail))
    return errs
