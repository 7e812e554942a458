"""x-kubernetes-validations rules: vectors from upstream's schema/cel/validation_test.go, run through Schema.

Each group is an object, its schema, rules that must hold, and rules whose error must contain a text. Rules this
server cannot run as upstream does are listed in GAPS (expected failures, so a fix shows up).
"""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.apiextensions.schema import Schema

INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
IOS = {"x-kubernetes-int-or-string": True}
PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def fmt(type_: str, format_: str) -> dict[str, Any]:
    return {"type": type_, "format": format_}


def lst(items: dict[str, Any], list_type: str | None = None, keys: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": items}
    if list_type:
        out["x-kubernetes-list-type"] = list_type
    if keys:
        out["x-kubernetes-list-map-keys"] = keys
    return out


def mp(values: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values}


def obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


def vals(*values: Any) -> dict[str, Any]:
    return {f"val{i + 1}": v for i, v in enumerate(values)}


def schemas(*items: dict[str, Any]) -> dict[str, Any]:
    return obj({f"val{i + 1}": s for i, s in enumerate(items)})


def run(schema: dict[str, Any], rule: str, value: Any, old: Any = None) -> list[str]:
    compiled = Schema.compile({**schema, "x-kubernetes-validations": [{"rule": rule}]})
    return [str(e) for e in compiled.validate_rules(value, old)]


GROUPS: list[tuple[str, Any, dict[str, Any], list[str], dict[str, str]]] = [
    (
        "integers",
        vals(2**63 - 1, 2**63 - 1, 2**31 - 1, 2**31 - 1),
        schemas(INT, INT, fmt("integer", "int32"), fmt("integer", "int32")),
        [
            "self.val1 == self.val2",
            "self.val1 == 9223372036854775807",
            "type(self.val1) == int",
            "self.val3 + 1 == 2147483647 + 1",
        ],
        {"self.val1 + 1 == 0": "integer overflow", "1 / 0 == 1 / 0": "division by zero"},
    ),
    (
        "numbers",
        vals(1.7976931348623157e308, 3.4028234663852886e38, 1),
        schemas(NUM, fmt("number", "float"), fmt("number", "double")),
        ["type(self.val1) == double", "type(self.val3) == double", "self.val3 == 1.0", "self.val3 + 0.5 == 1.5"],
        {},
    ),
    (
        "numeric comparisons",
        vals(5, 10, 15, 10.0, 10),
        schemas(INT, INT, INT, NUM, NUM),
        [
            "double(self.val1) < self.val4",
            "double(self.val2) == self.val4",
            "self.val1 < 10.0",
            "self.val5 == self.val4",
        ],
        {},
    ),
    (
        "unicode strings",
        vals("Rook takes 👑", "Rook takes 👑"),
        schemas(STR, STR),
        [
            "self.val1 == self.val2",
            "self.val1.startsWith('Rook')",
            "self.val1.contains('takes')",
            "self.val1.endsWith('👑')",
            "self.val1.matches('^[^0-9]*$')",
            "size(self.val1) == 12",
            "self.val1.size() == 12",
            "self.val1.charAt(3) == 'k'",
            "self.val1.indexOf('o', 2) == 2",
            "self.val1.replace(' ', 'x', 1) == 'Rookxtakes 👑'",
            "self.val1.split(' ', 2) == ['Rook', 'takes 👑']",
            "self.val1.substring(4, 10).trim() == 'takes'",
            "self.val1.upperAscii() == 'ROOK TAKES 👑'",
            "'%d %s %f %s %s'.format([1, 'abc', 1.0, duration('1m'), timestamp('2000-01-01T00:00:00.000Z')])"
            " == '1 abc 1.000000 60s 2000-01-01T00:00:00Z'",
            "'%o %o %o'.format([7, 8, 9]) == '7 10 11'",
            "'%b %b %b'.format([7, 8, 9]) == '111 1000 1001'",
        ],
        {"self.val1.matches(')')": "compilation failed: ERROR: <input>:1:19: invalid matches argument"},
    ),
    (
        "bytes",
        vals("QUI="),
        schemas(fmt("string", "byte")),
        ["self.val1 == b'AB'", "self.val1 == bytes('AB')", "type(self.val1) == bytes", "size(self.val1) == 2"],
        {},
    ),
    (
        "duration format",
        vals("1h2m3s4ms"),
        schemas(fmt("string", "duration")),
        [
            "self.val1 == duration('1h2m') + duration('3s4ms')",
            "self.val1.getMinutes() == 62",
            "self.val1.getMilliseconds() == 3723004",
        ],
        {
            "duration('1')": "compilation failed: ERROR: <input>:1:10: invalid duration argument",
            "duration('1us') < duration('1nns')": "compilation failed: ERROR: <input>:1:28: invalid duration argument",
        },
    ),
    (
        "date and date-time formats",
        vals("1997-07-16", "2011-08-18T19:03:37.010000000+01:00"),
        schemas(fmt("string", "date"), fmt("string", "date-time")),
        [
            "self.val1 == timestamp('1997-07-16T00:00:00.000Z')",
            "self.val1.getMonth() == 06",
            "self.val2 == timestamp('2011-08-18T00:00:00.000+01:00') + duration('19h3m37s10ms')",
            "self.val2.getDate('01:00') == 18",
            "self.val2.getHours('UTC') == 18",
            "self.val2.getMilliseconds('01:00') == 10",
        ],
        {
            "timestamp('1000-00-00T00:00:00Z')": "compilation failed: ERROR: <input>:1:11: invalid timestamp",
            "timestamp(-62135596801)": "compilation failed: ERROR: <input>:1:11: invalid timestamp",
        },
    ),
    (
        "conversions",
        vals(10, 10.0, 10.49, True, "10", "MTA=", "3723.004s", "1h2m3s4ms", "2011-08-18T19:03:37.01+01:00"),
        schemas(
            INT,
            NUM,
            NUM,
            BOOL,
            STR,
            fmt("string", "byte"),
            STR,
            fmt("string", "duration"),
            fmt("string", "date-time"),
        ),
        [
            "int(self.val2) == self.val1",
            "int(self.val3) == self.val1",
            "double(self.val5) == self.val2",
            "bytes(self.val5) == self.val6",
            "string(self.val2) == '10'",
            "string(self.val3) == '10.49'",
            "string(self.val4) == 'true'",
            "string(self.val6) == self.val5",
            "duration(self.val7) == self.val8",
            "string(self.val8) == self.val7",
            "string(self.val9) == '2011-08-18T19:03:37.01+01:00'",
        ],
        {},
    ),
    (
        "lists",
        vals([1, 2, 3], [1, 2, 3]),
        schemas(lst(INT), lst(INT)),
        [
            "self.val1 == self.val2",
            "1 in self.val1",
            "self.val1 + [4, 5] == [1, 2, 3, 4, 5]",
            "lists.range(4) == [0,1,2,3]",
        ],
        {},
    ),
    (
        "maps",
        {"val1": {"k1": "a", "k2": "b"}, "val2": {"k2": "b", "k1": "a"}},
        schemas(mp(STR), mp(STR)),
        ["self.val1 == self.val2", "'k1' in self.val1", "self.val1 == {'k1': 'a', 'k2': 'b'}", "has(self.val1.k1)"],
        {"self.val1['c'] == 'x'": "no such key: c"},
    ),
    (
        "object access",
        {"a": {"b": 1, "d": None}, "a1": {"b1": {"c1": 4}}},
        obj(
            {
                "a": obj({"b": INT, "c": INT, "d": {"type": "integer", "nullable": True}}),
                "a1": obj({"b1": obj({"c1": INT}), "d2": obj({"e2": INT})}),
            }
        ),
        ["has(self.a.b)", "!has(self.a.c)", "!has(self.a.d)", "has(self.a1.b1.c1)", "!has(self.a1.d2)"],
        {"has(self.a.z)": "undefined field 'z'", "has(self.a1.d2.e2)": "no such key: d2"},
    ),
    (
        "list map access",
        {"listMap": [{"k": "a1", "v": "b1"}, {"k": "a2", "v": "b2"}, {"k": "a3", "v": "b3", "v2": "z"}]},
        obj({"listMap": lst(obj({"k": STR, "v": STR, "v2": STR}), "map", ["k"])}),
        [
            "self.listMap.all(m, m.k.startsWith('a'))",
            "self.listMap.all(m, !has(m.v2) || m.v2 == 'z')",
            "self.listMap.exists_one(m, m.k == 'a3')",
            "self.listMap.map(m, m.v).exists(v, v == 'b1')",
            "self.listMap.map(m, has(m.v2) && m.v2 == 'z', m.v2).size() == 1",
        ],
        {
            "self.listMap.all(m, m.v2 == 'z')": "no such key: v2",
            "self.listMap.all(m, m.x == 'z')": "undefined field 'x'",
        },
    ),
    (
        "typemeta and objectmeta at the root",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "foo", "namespace": "xyz"}, "spec": {"field1": "a"}},
        obj({"spec": obj({"field1": STR})}),
        ["self.kind == 'Pod'", "self.apiVersion == 'v1'", "self.metadata.name == 'foo'", "self.spec.field1 == 'a'"],
        {"has(self.metadata.namespace)": "undefined field 'namespace'"},
    ),
    (
        "embedded object",
        {"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "foo", "namespace": "x"}, "spec": {"f": "a"}}},
        obj(
            {
                "e": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                }
            }
        ),
        ["self.e.kind == 'Pod'", "self.e.metadata.name == 'foo'", "has(self.e)"],
        {"has(self.e.spec)": "undefined field 'spec'", "has(self.e.metadata.namespace)": "undefined field 'namespace'"},
    ),
    (
        "embedded object declaring its metadata",
        {"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "foo", "namespace": "ns"}, "spec": {"if": "x"}}},
        obj(
            {
                "e": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "kind": STR,
                        "apiVersion": STR,
                        "metadata": obj({"name": STR, "generateName": STR, "namespace": STR}),
                        "spec": obj({"if": STR}),
                    },
                }
            }
        ),
        ["self.e.metadata.namespace == 'ns'", "has(self.e.spec.if)", "self.e.spec.__if__ == 'x'"],
        {},
    ),
    (
        "int-or-string",
        {"s": "25%", "i": 1, "min": "50%", "current": 5, "available": 10},
        obj({"s": IOS, "i": IOS, "min": IOS, "current": INT, "available": INT}),
        [
            "self.s == '25%'",
            "self.s != 1",
            "self.i == 1 || self.i == '25%'",
            "type(self.i) == int ? self.i == 1 : self.i == '25%'",
            r"type(self.min) == string && self.min.matches(r'(\d+(\.\d+)?%)')",
            "type(self.min) == int ? self.current <= self.min : "
            "double(self.current) / double(self.available) >= double(self.min.replace('%', '')) / 100.0",
        ],
        {},
    ),
    (
        "preserved unknown fields",
        {
            "withUnknown": {"known": 1, "unknown": "a"},
            "list": [{"known": 1, "unknown": "a"}, {"known": 1, "unknown": "b"}, {"known": 1, "unknown": "b"}],
        },
        obj(
            {
                "withUnknown": {**PRESERVE, "properties": {"known": INT}},
                "list": lst({**PRESERVE, "properties": {"known": INT}}),
            }
        ),
        ["self.withUnknown.known == 1", "self.list[0] != self.list[1]", "self.list[1] == self.list[2]"],
        {"has(self.withUnknown.unknown)": "undefined field 'unknown'"},
    ),
    (
        "field nullability",
        {"plain": "v1", "nullable": "v3", "toNull": None},
        obj({"plain": STR, "nullable": {**STR, "nullable": True}, "toNull": {**STR, "nullable": True}, "unset": STR}),
        ["!has(self.unset)", "has(self.nullable) && self.nullable == 'v3'", "!has(self.toNull)"],
        {},
    ),
    (
        "null values in containers",
        {"m": {"a": None, "b": "x"}, "l": [None, "x"]},
        obj({"m": mp({**STR, "nullable": True}), "l": lst({**STR, "nullable": True})}),
        ["self.m.size() == 2", "type(self.m['a']) == null_type", "type(self.l[0]) == null_type"],
        {},
    ),
    (
        "escaping",
        {
            "namespace": 17,
            "if": 12,
            "self": 201,
            "int": 101,
            "dot.dot": 401,
            "dash-dash": 402,
            "a__b": 405,
            "_true": 301,
        },
        obj({k: INT for k in ("namespace", "if", "self", "int", "dot.dot", "dash-dash", "a__b", "_true")}),
        [
            "self.__namespace__ == 17",
            "self.__if__ == 12",
            "self.self == 201",
            "self.int == 101",
            "self.dot__dot__dot == 401",
            "self.dash__dash__dash == 402",
            "self.a__underscores__b == 405",
            "self._true == 301",
        ],
        {"self.__illegal__ == 301": "undefined field '__illegal__'", "self.true == 1": "Syntax error"},
    ),
    (
        "map keys are not escaped",
        {"m": {"@": 1, "9": 2, "int": 3, "./-": 4}},
        obj({"m": mp(INT)}),
        ["self.m['@'] == 1", "self.m['9'] == 2", "self.m['int'] == 3", "self.m['./-'] == 4"],
        {},
    ),
    (
        "kubernetes list library",
        {
            "ints": [1, 2, 2, 3],
            "empty": [],
            "doubles": [1, 2, 2, 3],
            "durations": ["1s", "1m", "1m", "1h"],
            "strings": ["a", "b", "b", "c"],
            "dates": ["2000-01-01", "2000-02-01", "2000-02-01", "2010-01-01"],
        },
        obj(
            {
                "ints": lst(INT),
                "empty": lst(INT),
                "doubles": lst(fmt("number", "double")),
                "durations": lst(fmt("string", "duration")),
                "strings": lst(STR),
                "dates": lst(fmt("string", "date")),
            }
        ),
        [
            "self.ints.sum() == 8",
            "self.ints.min() == 1",
            "self.ints.max() == 3",
            "self.empty.sum() == 0",
            "self.ints.isSorted()",
            "self.ints.indexOf(2) == 1",
            "self.ints.lastIndexOf(2) == 2",
            "self.doubles.sum() == 8.0",
            "self.doubles.indexOf(2.0) == 1",
            "self.durations.sum() == duration('1h2m1s')",
            "self.durations.max() == duration('1h')",
            "self.strings.min() == 'a'",
            "self.dates.max() == timestamp('2010-01-01T00:00:00.000Z')",
            "[[1], [2]].indexOf([1]) == 0",
            "([0] + self.empty).min() == 0",
        ],
        {"self.empty.min() == 1": "min called on empty list", "self.empty.max() == 3": "max called on empty list"},
    ),
    (
        "regex library",
        {"str": "this is a 123 string 456"},
        obj({"str": STR}),
        [
            "self.str.find('[0-9]+') == '123'",
            "self.str.find('xyz') == ''",
            "self.str.findAll('[0-9]+') == ['123', '456']",
            "self.str.findAll('[0-9]+', 1) == ['123']",
            "self.str.findAll('[0-9]+', -1) == ['123', '456']",
        ],
        {"self.str.matches('x++')": "invalid matches argument"},
    ),
    (
        "url library",
        {"url": "https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor"},
        obj({"url": STR}),
        [
            "url('/path').getScheme() == ''",
            "url('https://example.com:80/').getHost() == 'example.com:80'",
            "url('https://[::1]:80/').getHost() == '[::1]:80'",
            "url('https://[::1]/').getHostname() == '::1'",
            "url('https://example.com/with space/').getEscapedPath() == '/with%20space/'",
            "url('https://example.com/path?').getQuery() == {}",
            "url(self.url).getHostname() == 'kubernetes.io'",
            "url(self.url).getPort() == '80'",
            "url(self.url).getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            "isURL('/path') == true",
            "isURL('https://a:b:c/') == false",
            "isURL('../relative-path') == false",
        ],
        {},
    ),
    (
        "quantity library",
        vals("20", "200M"),
        schemas(STR, STR),
        [
            "isQuantity(self.val1)",
            'quantity(self.val2) == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
            'quantity(self.val1).isLessThan(quantity("100M"))',
            'quantity(self.val2).compareTo(quantity("0.2G")) == 0',
            'quantity("50k").add(quantity(self.val1)) == quantity("50.02k")',
            'quantity("50k").sub(quantity(self.val1)) == quantity("49980")',
            "quantity(self.val1).isInteger()",
        ],
        {},
    ),
    (
        "ip and cidr libraries",
        vals("x"),
        schemas(STR),
        [
            'isIP("192.168.0.1")',
            'ip.isCanonical("127.0.0.1")',
            'ip("127.0.0.1").isLoopback()',
            'ip("224.0.0.1").isLinkLocalMulticast()',
            'ip("192.168.0.1").isGlobalUnicast()',
            'cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))',
            'cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")',
            "cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()",
            "cidr('::1/128').ip().family() == 6",
        ],
        {},
    ),
    (
        "format library",
        vals("x"),
        schemas(STR),
        [
            'format.dns1123Label().validate("my-label-name") == optional.none()',
            'format.named("dns1123Label").value().validate("my-name") == optional.none()',
            'format.dns1123Label().validate("contains a space").value()[0] == '
            "\"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and"
            " end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is"
            " '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\"",
            '!format.named("unknown").hasValue()',
        ],
        {},
    ),
    (
        "undeclared references",
        vals("x"),
        schemas(STR),
        [],
        {
            "authorizer.path('/healthz').check('get').allowed()": "undeclared reference to 'authorizer'",
            "self.val1.noSuchFunction()": "undeclared reference to 'noSuchFunction'",
        },
    ),
]

GAPS = {
    "self.val1.all(k, v, v == 'x')": "two-variable comprehensions are not in the `cel` package",
    "self.?val1.orValue('') == 'x'": "optional field selection (`.?`) is not in the `cel` package",
    "type(self.val1) == google.protobuf.Duration": "protobuf type names are not in the `cel` package",
    "['b', 'a'] == self.val2": "set-list equality ignores order upstream",
    "[{'a': 1}, {'b': 2}].exists(m, m.b == 2)": "errors inside exists() are not absorbed by the `cel` package",
}


def _valid_cases() -> list[Any]:
    return [
        pytest.param(value, schema, rule, id=f"{name}: {rule[:60]}")
        for name, value, schema, ok, _ in GROUPS
        for rule in ok
    ]


def _error_cases() -> list[Any]:
    return [
        pytest.param(value, schema, rule, text, id=f"{name}: {rule[:60]}")
        for name, value, schema, _, errors in GROUPS
        for rule, text in errors.items()
    ]


@pytest.mark.parametrize(("value", "schema", "rule"), _valid_cases())
def test_rule_holds(value: Any, schema: dict[str, Any], rule: str) -> None:
    assert run(schema, rule, value) == []


@pytest.mark.parametrize(("value", "schema", "rule", "text"), _error_cases())
def test_rule_error(value: Any, schema: dict[str, Any], rule: str, text: str) -> None:
    errs = run(schema, rule, value)
    assert errs
    assert all(text in e for e in errs), errs


@pytest.mark.parametrize("rule", list(GAPS), ids=list(GAPS.values()))
def test_known_gaps(rule: str) -> None:
    schema = schemas({"type": "object", "additionalProperties": STR}, lst(STR, "set"))
    value = vals({"a": "x"}, ["a", "b"])
    if "Duration" in rule:
        schema, value = schemas(fmt("string", "duration")), vals("1s")
    elif rule.startswith("self.?"):
        schema, value = schemas(STR), vals("x")
    with pytest.raises(AssertionError):
        assert run(schema, rule, value) == []


# ---- messages, reasons, field paths --------------------------------------------------------------------------------

SPEC = obj(
    {
        "spec": obj(
            {"replicas": INT, "max": INT, "name": STR, "items": lst(obj({"name": STR, "v": INT})), "m": mp(INT)},
        )
    }
)


def _spec_rules(*rules: dict[str, Any], where: str = "spec") -> Schema:
    raw = {**SPEC, "properties": {**SPEC["properties"]}}
    raw["properties"]["spec"] = {**SPEC["properties"]["spec"], "x-kubernetes-validations": list(rules)}
    return Schema.compile(raw)


def test_default_message_and_value_omitted_for_objects() -> None:
    schema = _spec_rules({"rule": "self.replicas <= self.max"})
    assert [str(e) for e in schema.validate({"spec": {"replicas": 3, "max": 2}})] == [
        "spec: Invalid value: failed rule: self.replicas <= self.max"
    ]


def test_message_message_expression_reason_and_field_path() -> None:
    schema = _spec_rules(
        {
            "rule": "self.replicas <= self.max",
            "message": "too many",
            "reason": "FieldValueForbidden",
            "fieldPath": ".replicas",
        },
        {
            "rule": "self.name != 'x'",
            "messageExpression": "'name ' + self.name + ' is taken'",
            "reason": "FieldValueDuplicate",
        },
        {"rule": "has(self.name)", "message": "name is required", "reason": "FieldValueRequired"},
        {"rule": "self.m.all(k, self.m[k] > 0)", "fieldPath": ".m['a.b']"},
    )
    errs = schema.validate({"spec": {"replicas": 3, "max": 2, "name": "x", "m": {"a.b": 0}}})
    assert [str(e) for e in errs] == [
        "spec.replicas: Forbidden: too many",
        "spec: Duplicate value",
        "spec.m[a.b]: Invalid value: failed rule: self.m.all(k, self.m[k] > 0)",
    ]
    required_only = _spec_rules(
        {"rule": "has(self.name)", "message": "name is required", "reason": "FieldValueRequired"}
    )
    assert [str(e) for e in required_only.validate({"spec": {}})] == ["spec: Required value: name is required"]


@pytest.mark.parametrize(
    "expression",
    ["'line\\nbreak'", "''", "'   '", "1 == 1", "self.name + 'x'", "'" + "x" * 6000 + "'"],
    ids=["newline", "empty", "spaces", "not-a-string", "runtime-error", "too-long"],
)
def test_message_expression_falls_back_to_message(expression: str) -> None:
    schema = _spec_rules({"rule": "false", "message": "fallback", "messageExpression": expression})
    assert [str(e) for e in schema.validate({"spec": {}})] == ["spec: Invalid value: fallback"]


def test_scalar_rule_shows_value_and_paths_of_items_and_map_values() -> None:
    raw = obj(
        {
            "items": lst(
                obj({"name": {**STR, "x-kubernetes-validations": [{"rule": "self != 'bad'", "message": "no"}]}})
            ),
            "m": mp({**INT, "x-kubernetes-validations": [{"rule": "self > 0"}]}),
        }
    )
    errs = Schema.compile(raw).validate({"items": [{"name": "ok"}, {"name": "bad"}], "m": {"k": 0}})
    assert [str(e) for e in errs] == [
        'items[1].name: Invalid value: "bad": no',
        "m[k]: Invalid value: 0: failed rule: self > 0",
    ]


def test_root_rule_errors_land_on_nil() -> None:
    raw = {**obj({"spec": obj({"x": INT})}), "x-kubernetes-validations": [{"rule": "self.spec.x > 1"}]}
    assert [str(e) for e in Schema.compile(raw).validate({"spec": {"x": 1}})] == [
        "<nil>: Invalid value: failed rule: self.spec.x > 1"
    ]


def test_runtime_errors_use_cel_go_words() -> None:
    schema = _spec_rules({"rule": "self.items[5].name == 'x'"}, {"rule": "self.replicas / self.max > 0"})
    errs = [str(e) for e in schema.validate({"spec": {"items": [], "replicas": 1, "max": 0}})]
    assert errs == [
        "spec: Invalid value: \"object\": index out of bounds: 5 evaluating rule: self.items[5].name == 'x'",
        'spec: Invalid value: "object": division by zero evaluating rule: self.replicas / self.max > 0',
    ]


def test_openapi_errors_block_rules() -> None:
    schema = _spec_rules({"rule": "self.replicas > 0"})
    errs = [str(e) for e in schema.validate({"spec": {"replicas": "x"}})]
    assert errs == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation",
    ]


def test_prior_blocking_errors_from_the_caller_block_rules() -> None:
    from tinykube.api.errors import required

    schema = _spec_rules({"rule": "self.replicas > 0"})
    errs = schema.validate({"spec": {"replicas": 0}}, prior=[required("metadata.name")])
    assert [e.detail for e in errs] == [
        "some validation rules were not checked because the object was invalid; correct the existing errors to "
        "complete validation"
    ]


# ---- transition rules and ratcheting -------------------------------------------------------------------------------


def test_transition_rules_need_an_old_value() -> None:
    raw = obj({"v": {**STR, "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]}})
    schema = Schema.compile(raw)
    assert schema.validate({"v": "new"}) == []
    assert schema.validate({"v": "new"}, {}) == []
    assert [str(e) for e in schema.validate({"v": "new"}, {"v": "old"})] == ['v: Invalid value: "new": immutable']


def test_optional_old_self_runs_on_create() -> None:
    rule = {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True, "message": "no shrink"}
    schema = Schema.compile(obj({"n": {**INT, "x-kubernetes-validations": [rule]}}))
    assert schema.validate({"n": 1}) == []
    assert [str(e) for e in schema.validate({"n": 1}, {"n": 2})] == ["n: Invalid value: 1: no shrink"]


def test_transition_rules_in_map_lists_correlate_by_key() -> None:
    item = obj({"k1": STR, "k2": STR, "v1": {**NUM, "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]}})
    schema = Schema.compile(obj({"field": lst(item, "map", ["k1", "k2"])}))
    old = {"field": [{"k1": "a", "k2": "b", "v1": 1.0}]}
    assert schema.validate({"field": [{"k1": "a", "k2": "b", "v1": 1.2}]}, old) == []
    assert [str(e) for e in schema.validate({"field": [{"k1": "a", "k2": "b", "v1": 0.9}]}, old)] == [
        "field[0].v1: Invalid value: 0.9: failed rule: self >= oldSelf"
    ]
    assert schema.validate({"field": [{"k1": "x", "k2": "b", "v1": 0.9}]}, old) == []


def test_unchanged_values_ratchet_rule_errors() -> None:
    raw = obj(
        {
            "foo": {**STR, "x-kubernetes-validations": [{"rule": "self == 'baz'", "message": "gotta be baz"}]},
            "bar": STR,
        },
    )
    schema = Schema.compile(raw)
    assert schema.validate({"foo": "bar", "bar": "x"}, {"foo": "bar"}) == []
    assert [str(e) for e in schema.validate({"foo": "bar"})] == ['foo: Invalid value: "bar": gotta be baz']
    parent_rule = {
        **raw,
        "x-kubernetes-validations": [{"rule": 'self.foo == "baz"', "message": "gotta be baz", "fieldPath": ".foo"}],
    }
    schema = Schema.compile(parent_rule)
    assert [str(e) for e in schema.validate({"foo": "bar", "bar": "invalid"}, {"foo": "bar"})] == [
        "foo: Invalid value: gotta be baz"
    ]
