"""compile_errors and default_value_errors: what the CRD validator asks the engine, with upstream's paths/words."""

from __future__ import annotations

from typing import Any

from tinykube.api.errors import ErrorType
from tinykube.apiextensions.schema import compile_errors, default_value_errors

ROOT = "spec.validation.openAPIV3Schema"
INT = {"type": "integer"}
STR = {"type": "string"}


def _with_rules(prop: dict[str, Any], *rules: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {**prop, "x-kubernetes-validations": list(rules)}}}


def test_syntax_error_message_is_cel_go_s() -> None:
    schema = _with_rules({"type": "object", "properties": {"x": INT}}, {"rule": "self.x >"})
    (err,) = compile_errors(schema, ROOT)
    assert err.field == f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule"
    assert str(err).startswith(
        f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        '{"Rule":"self.x \\u003e","Message":"","MessageExpression":"","Reason":null,"FieldPath":"",'
        '"OptionalOldSelf":null}: '
        "compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting"
    )
    assert str(err).endswith("\n | self.x >\n | ........^")


def test_undefined_fields_and_undeclared_references() -> None:
    schema = _with_rules(
        {"type": "object", "properties": {"x": INT}},
        {"rule": "has(self.y)"},
        {"rule": "self.x > limit", "message": "m"},
    )
    errs = compile_errors(schema, ROOT)
    assert [e.detail for e in errs] == [
        "compilation failed: ERROR: <input>:1:9: undefined field 'y'\n | has(self.y)\n | ........^",
        "compilation failed: ERROR: <input>:1:10: undeclared reference to 'limit' (in container '')\n"
        " | self.x > limit\n | .........^",
    ]
    assert str(errs[1]).startswith(
        f'{ROOT}.properties[spec].x-kubernetes-validations[1].rule: Invalid value: {{"Rule":"self.x \\u003e limit",'
        '"Message":"m",'
    )


def test_message_expression_errors() -> None:
    schema = _with_rules(
        {"type": "object", "properties": {"x": INT}}, {"rule": "true", "messageExpression": "self.nope"}
    )
    (err,) = compile_errors(schema, ROOT)
    assert err.field == f"{ROOT}.properties[spec].x-kubernetes-validations[0].messageExpression"
    assert err.detail.startswith("messageExpression compilation failed: ERROR: <input>:1:5: undefined field 'nope'")


def test_literal_arguments_are_checked_at_compile_time() -> None:
    schema = _with_rules(STR, {"rule": "self.matches('[')"}, {"rule": "duration('1d') > duration('1h')"})
    errs = compile_errors(schema, ROOT)
    assert [e.detail.splitlines()[0] for e in errs] == [
        "compilation failed: ERROR: <input>:1:14: invalid matches argument",
        "compilation failed: ERROR: <input>:1:10: invalid duration argument",
    ]


def test_transition_rules_need_correlatable_positions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "value": {
                "type": "array",
                "maxItems": 10,
                "items": {**STR, "maxLength": 10, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
            },
            "keyed": {
                "type": "array",
                "maxItems": 10,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k"],
                "items": {
                    "type": "object",
                    "required": ["k"],
                    "properties": {"k": STR},
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                },
            },
            "atomic": {
                "type": "array",
                "maxItems": 10,
                "items": STR,
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
            },
        },
    }
    (err,) = compile_errors(schema, ROOT)
    assert str(err) == (
        f'{ROOT}.properties[value].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": '
        f"oldSelf cannot be used on the uncorrelatable portion of the schema within {ROOT}.properties[value]"
    )


def test_optional_old_self_needs_old_self() -> None:
    schema = _with_rules({**STR, "maxLength": 10}, {"rule": 'self == "foo"', "optionalOldSelf": False})
    (err,) = compile_errors(schema, ROOT)
    assert str(err) == (
        f"{ROOT}.properties[spec].x-kubernetes-validations[0].optionalOldSelf: Invalid value: false: "
        "may not be set if oldSelf is not used in rule"
    )
    ok = _with_rules({**STR, "maxLength": 10}, {"rule": 'self == oldSelf.orValue("")', "optionalOldSelf": True})
    assert compile_errors(ok, ROOT) == []


def test_cost_limits_per_rule_and_per_schema() -> None:
    contains = [{"rule": "self.contains('keyword')"}]
    schema = {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "maxItems": 100000,
                "items": {**STR, "maxLength": 5000, "x-kubernetes-validations": contains},
            },
            "map": {
                "type": "object",
                "maxProperties": 1000,
                "additionalProperties": {**STR, "maxLength": 5000, "x-kubernetes-validations": contains},
            },
            "field": {**INT, "x-kubernetes-validations": [{"rule": "self > 50 && self < 100"}]},
        },
    }
    errs = compile_errors(schema, ROOT)
    assert [(e.type, e.field) for e in errs] == [
        (ErrorType.FORBIDDEN, f"{ROOT}.properties[list].items.x-kubernetes-validations[0].rule"),
        (ErrorType.FORBIDDEN, f"{ROOT}.properties[list].items.x-kubernetes-validations[0].rule"),
        (ErrorType.FORBIDDEN, f"{ROOT}.properties[map].additionalProperties.x-kubernetes-validations[0].rule"),
        (ErrorType.FORBIDDEN, ROOT),
    ]
    assert errs[0].detail == (
        "estimated rule cost exceeds budget by factor of 20.0x (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
    assert errs[1].detail == "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
    assert errs[3].detail.startswith("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema ")


def test_unbounded_nested_iteration_is_refused_and_bounds_fix_it() -> None:
    rule = [{"rule": "self.all(x, self.exists_one(y, x.lowerAscii() == y.lowerAscii()))"}]
    unbounded = {
        "type": "object",
        "properties": {"f": {"type": "array", "items": STR, "x-kubernetes-validations": rule}},
    }
    errs = compile_errors(unbounded, ROOT)
    assert [e.field for e in errs] == [f"{ROOT}.properties[f].x-kubernetes-validations[0].rule"] * 2 + [ROOT]
    assert errs[0].detail.startswith("estimated rule cost exceeds budget by factor of more than 100x")
    bounded = {
        "type": "object",
        "properties": {
            "f": {"type": "array", "maxItems": 5, "items": {**STR, "maxLength": 5}, "x-kubernetes-validations": rule}
        },
    }
    assert compile_errors(bounded, ROOT) == []


def test_metadata_name_is_as_long_as_a_request_for_cost() -> None:
    """Upstream's root metadata declares name and generateName as plain strings: 3 MiB - 2 bytes for the cost."""
    rule = "self.metadata.name.contains(self.metadata.generateName)"
    errs = compile_errors({"type": "object", "x-kubernetes-validations": [{"rule": rule}]}, ROOT)
    assert errs[0].detail.startswith("estimated rule cost exceeds budget by factor of more than 100x")
    cheap = [{"rule": "self.metadata.name.startsWith('a') && self.metadata.name != ''"}]
    assert compile_errors({"type": "object", "x-kubernetes-validations": cheap}, ROOT) == []


def test_default_value_errors() -> None:
    path = f"{ROOT}.properties[spec].properties[replicas].default"
    assert default_value_errors({"type": "integer", "maximum": 3}, 2, path) == []
    (err,) = default_value_errors({"type": "integer", "maximum": 3}, 5, path)
    assert str(err) == f"{path}: Invalid value: 5:  in body should be less than or equal to 3"
    ruled = {"type": "integer", "x-kubernetes-validations": [{"rule": "self % 2 == 0", "message": "even"}]}
    assert [str(e) for e in default_value_errors(ruled, 3, path)] == [f"{path}: Invalid value: 3: even"]
    transition = {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    assert default_value_errors(transition, 3, path) == []
