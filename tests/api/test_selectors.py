"""Label and field selectors: grammar, matching and upstream's error messages.

The messages are those of labels.Parse and fields.ParseSelector in apimachinery, as kubectl shows them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tinykube.api.errors import BadRequest
from tinykube.api.selectors import (
    DEFAULT_FIELDS,
    EVERYTHING,
    NOTHING,
    field_value,
    parse_field_selector,
    parse_label_selector,
    selector_from_label_selector,
    selector_from_set,
    supported_fields,
)

KEY_REGEX = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
ALNUM_RULE = (
    "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
KEY_EXAMPLES = f"(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{KEY_REGEX}')"
VALUE_EXAMPLES = f"(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '({KEY_REGEX})?')"
NAME_PART_ERROR = f"name part must {ALNUM_RULE} {KEY_EXAMPLES}"
VALUE_ERROR = f"a valid label must be an empty string or {ALNUM_RULE} {VALUE_EXAMPLES}"
OPERATORS = "in, notin, =, ==, !=, gt, lt"

LABELS = {"app": "web", "tier": "frontend", "version": "3", "example.com/team": "a"}


# ---- label selectors: parsing and matching -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        pytest.param("", LABELS, True, id="empty-selects-everything"),
        pytest.param("app=web", LABELS, True, id="equals"),
        pytest.param("app==web", LABELS, True, id="double-equals"),
        pytest.param("app=db", LABELS, False, id="equals-mismatch"),
        pytest.param("app!=db", LABELS, True, id="not-equals"),
        pytest.param("missing!=db", LABELS, True, id="not-equals-absent-key-matches"),
        pytest.param("app in (web,db)", LABELS, True, id="in"),
        pytest.param("app in (db)", LABELS, False, id="in-mismatch"),
        pytest.param("missing in (db)", LABELS, False, id="in-absent-key"),
        pytest.param("app notin (db,cache)", LABELS, True, id="notin"),
        pytest.param("app notin (web)", LABELS, False, id="notin-mismatch"),
        pytest.param("missing notin (web)", LABELS, True, id="notin-absent-key-matches"),
        pytest.param("tier", LABELS, True, id="exists"),
        pytest.param("missing", LABELS, False, id="exists-absent"),
        pytest.param("!missing", LABELS, True, id="does-not-exist"),
        pytest.param("!tier", LABELS, False, id="does-not-exist-present"),
        pytest.param("version>2", LABELS, True, id="gt"),
        pytest.param("version>3", LABELS, False, id="gt-equal"),
        pytest.param("version<4", LABELS, True, id="lt"),
        pytest.param("app>1", LABELS, False, id="gt-non-integer-label"),
        pytest.param("missing<4", LABELS, False, id="lt-absent-key"),
        pytest.param("app=web,tier=frontend", LABELS, True, id="and"),
        pytest.param("app=web,tier=backend", LABELS, False, id="and-one-fails"),
        pytest.param("  app = web ,\ttier\n", LABELS, True, id="whitespace-tolerant"),
        pytest.param("app in ( web , db )", LABELS, True, id="whitespace-in-set"),
        pytest.param("example.com/team=a", LABELS, True, id="prefixed-key"),
        pytest.param("empty=", {"empty": ""}, True, id="empty-value"),
        pytest.param("empty in ()", {"empty": ""}, True, id="empty-set-means-empty-string"),
        pytest.param("x in (,a)", {"x": ""}, True, id="leading-comma-adds-empty-string"),
        pytest.param("in in (in,notin)", {"in": "notin"}, True, id="keywords-as-identifiers"),
        pytest.param("app=in", {"app": "in"}, True, id="keyword-as-value"),
    ],
)
def test_label_selector_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("b=1,a=2", "a=2,b=1", id="sorted-by-key"),
        pytest.param("x in (c,a,b)", "x in (a,b,c)", id="set-values-sorted"),
        pytest.param("!a, b , c!=d, e==f, g>1, h<2", "!a,b,c!=d,e==f,g>1,h<2", id="all-operators"),
        pytest.param("x notin ()", "x notin ()", id="empty-set"),
    ],
)
def test_label_selector_string(text: str, canonical: str) -> None:
    assert str(parse_label_selector(text)) == canonical


def test_empty_property() -> None:
    assert parse_label_selector("").empty
    assert parse_label_selector(" ").empty
    assert not parse_label_selector("a").empty
    assert not NOTHING.empty
    assert EVERYTHING.empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a b", f"unable to parse requirement: found 'b', expected: {OPERATORS}", id="missing-operator"),
        pytest.param("a in", "unable to parse requirement: found '' expected: '('", id="in-without-set"),
        pytest.param(
            "a in (",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
            id="unterminated-set",
        ),
        pytest.param(
            "a in (b c)",
            "unable to parse requirement: found 'c', expected: ',' or ')'",
            id="set-missing-comma",
        ),
        pytest.param(
            "a in (b,=)",
            "unable to parse requirement: found '=', expected: ',', or identifier",
            id="operator-in-set",
        ),
        pytest.param("a,", "found '', expected: identifier after ','", id="trailing-comma"),
        pytest.param("a,,b", "found ',', expected: identifier after ','", id="double-comma"),
        pytest.param("=a", "found '=', expected: !, identifier, or 'end of string'", id="leading-operator"),
        pytest.param("a=b=c", "found '=', expected: ',' or 'end of string'", id="two-operators"),
        pytest.param("!a=b", "found '=', expected: ',' or 'end of string'", id="not-with-value"),
        pytest.param("!", "unable to parse requirement: found '', expected: identifier", id="bare-bang"),
        pytest.param("a=(b)", "unable to parse requirement: found '(', expected: identifier", id="paren-as-value"),
        pytest.param("-a", f'unable to parse requirement: <nil>: Invalid value: "-a": {NAME_PART_ERROR}', id="bad-key"),
        pytest.param(
            "a=-b",
            f'unable to parse requirement: values[0][a]: Invalid value: "-b": {VALUE_ERROR}',
            id="bad-value",
        ),
        pytest.param(
            "x in (ok,-no)",
            f'unable to parse requirement: values[0][x]: Invalid value: "-no": {VALUE_ERROR}',
            id="bad-set-value-index-after-sorting",
        ),
        pytest.param(
            "a=" + "v" * 64,
            f'unable to parse requirement: values[0][a]: Invalid value: "{"v" * 64}": '
            "must be no more than 63 characters",
            id="value-too-long",
        ),
        pytest.param(
            "x>abc",
            'unable to parse requirement: values[0]: Invalid value: "abc": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
            id="gt-not-integer",
        ),
        pytest.param(
            "x<-1",
            f'unable to parse requirement: values[0][x]: Invalid value: "-1": {VALUE_ERROR}',
            id="lt-negative-is-not-a-label-value",
        ),
        pytest.param(
            "Example.com/a",
            'unable to parse requirement: <nil>: Invalid value: "Example.com/a": prefix part '
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="bad-key-prefix",
        ),
        pytest.param(
            "/a",
            'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty',
            id="empty-key-prefix",
        ),
    ],
)
def test_label_selector_errors(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_label_selector(text)
    assert caught.value.message == message


def test_multiple_value_errors_aggregate() -> None:
    with pytest.raises(BadRequest) as caught:
        parse_label_selector("x in (-a,-b)")
    assert caught.value.message.startswith('unable to parse requirement: [values[0][x]: Invalid value: "-a": ')
    assert ', values[1][x]: Invalid value: "-b": ' in caught.value.message


def test_too_many_slashes_in_key() -> None:
    with pytest.raises(BadRequest) as caught:
        parse_label_selector("a/b/c")
    assert caught.value.message.endswith("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")


# ---- metav1.LabelSelector and Service-style maps -------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param({}, LABELS, True, id="empty-selects-everything"),
        pytest.param({"matchLabels": {"app": "web"}}, LABELS, True, id="match-labels"),
        pytest.param({"matchLabels": {"app": "db"}}, LABELS, False, id="match-labels-mismatch"),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]},
            LABELS,
            True,
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
            LABELS,
            False,
            id="not-in",
        ),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, LABELS, True, id="exists"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
            LABELS,
            False,
            id="does-not-exist",
        ),
        pytest.param(
            {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "x", "operator": "Exists"}]},
            LABELS,
            False,
            id="labels-and-expressions",
        ),
    ],
)
def test_selector_from_label_selector(selector: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert selector_from_label_selector(selector).matches(labels) is expected


def test_nil_label_selector_selects_nothing() -> None:
    nothing = selector_from_label_selector(None)
    assert not nothing.matches(LABELS)
    assert not nothing.matches({})
    assert not nothing.empty


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
            id="bad-operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist',
            id="exists-with-values",
        ),
        pytest.param({"matchLabels": {"-a": "b"}}, f'<nil>: Invalid value: "-a": {NAME_PART_ERROR}', id="bad-key"),
    ],
)
def test_selector_from_label_selector_errors(selector: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        selector_from_label_selector(selector)
    assert caught.value.message == message


def test_selector_from_set() -> None:
    selector = selector_from_set({"tier": "frontend", "app": "web"})
    assert str(selector) == "app=web,tier=frontend"
    assert selector.matches(LABELS)
    assert not selector.matches({"app": "web"})
    assert selector_from_set({}).empty
    assert selector_from_set({}).matches({})


# ---- field selectors -----------------------------------------------------------------------------

POD: dict[str, Any] = {
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "prod"},
    "spec": {"nodeName": "node-a", "restartPolicy": "Always", "hostNetwork": True},
    "status": {"phase": "Running", "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]},
}
EVENT: dict[str, Any] = {
    "kind": "Event",
    "metadata": {"name": "web-1.17", "namespace": "prod"},
    "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "prod", "uid": "u-1"},
    "reason": "Scheduled",
    "type": "Normal",
    "source": {"component": "default-scheduler"},
    "reportingController": "sched",
}
NODE: dict[str, Any] = {"kind": "Node", "metadata": {"name": "node-a"}, "spec": {}}
PODS = supported_fields("pods")
EVENTS = supported_fields("events")


@pytest.mark.parametrize(
    ("text", "supported", "obj", "expected"),
    [
        pytest.param("", PODS, POD, True, id="empty"),
        pytest.param("metadata.name=web-1", PODS, POD, True, id="name"),
        pytest.param("metadata.name==web-1", PODS, POD, True, id="double-equals"),
        pytest.param("metadata.name!=web-1", PODS, POD, False, id="not-equals"),
        pytest.param("metadata.namespace=prod,spec.nodeName=node-a", PODS, POD, True, id="and"),
        pytest.param("metadata.namespace=prod,spec.nodeName=node-b", PODS, POD, False, id="and-one-fails"),
        pytest.param("spec.nodeName=", PODS, {"metadata": {"name": "p"}}, True, id="missing-reads-empty"),
        pytest.param("spec.nodeName!=", PODS, POD, True, id="scheduled-pods"),
        pytest.param("status.phase=Running", PODS, POD, True, id="phase"),
        pytest.param("spec.hostNetwork=true", PODS, POD, True, id="host-network-bool"),
        pytest.param("spec.hostNetwork=false", PODS, {"spec": {}}, True, id="host-network-defaults-false"),
        pytest.param("status.podIP=10.0.0.7", PODS, POD, True, id="pod-ip-from-first-pod-ips"),
        pytest.param("status.podIP=10.0.0.9", PODS, {"status": {"podIP": "10.0.0.9"}}, True, id="pod-ip-fallback"),
        pytest.param("spec.host=node-a", PODS, POD, True, id="spec-host-alias"),
        pytest.param("involvedObject.kind=Pod,involvedObject.name=web-1", EVENTS, EVENT, True, id="involved-object"),
        pytest.param("involvedObject.uid=u-1", EVENTS, EVENT, True, id="involved-uid"),
        pytest.param("reason=Scheduled,type=Normal", EVENTS, EVENT, True, id="reason-type"),
        pytest.param("source=default-scheduler", EVENTS, EVENT, True, id="source-component"),
        pytest.param("source=sched", EVENTS, {**EVENT, "source": {}}, True, id="source-falls-back-to-controller"),
        pytest.param("reportingComponent=sched", EVENTS, EVENT, True, id="reporting-component"),
        pytest.param("spec.unschedulable=false", supported_fields("nodes"), NODE, True, id="unschedulable-default"),
        pytest.param("metadata.name=a\\,b", DEFAULT_FIELDS, {"metadata": {"name": "a,b"}}, True, id="escaped-comma"),
        pytest.param("metadata.name=a\\=b", DEFAULT_FIELDS, {"metadata": {"name": "a=b"}}, True, id="escaped-equals"),
        pytest.param(
            "metadata.name=a\\\\b",
            DEFAULT_FIELDS,
            {"metadata": {"name": "a\\b"}},
            True,
            id="escaped-backslash",
        ),
        pytest.param("metadata.name=x,,", DEFAULT_FIELDS, {"metadata": {"name": "x"}}, True, id="empty-terms-skipped"),
    ],
)
def test_field_selector_matches(text: str, supported: frozenset[str], obj: dict[str, Any], expected: bool) -> None:
    assert parse_field_selector(text, supported).matches(obj) is expected


@pytest.mark.parametrize(
    ("text", "supported", "message"),
    [
        pytest.param(
            "metadata.name",
            DEFAULT_FIELDS,
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
            id="no-operator",
        ),
        pytest.param(
            "metadata.name=a,b",
            DEFAULT_FIELDS,
            "invalid selector: 'metadata.name=a,b'; can't understand 'b'",
            id="unescaped-comma-splits",
        ),
        pytest.param(
            "metadata.name=a=b",
            DEFAULT_FIELDS,
            "invalid field selector: unescaped character in value: 61",
            id="unescaped-equals",
        ),
        pytest.param(
            "metadata.name=a\\x",
            DEFAULT_FIELDS,
            "invalid field selector: invalid escape sequence: \\x",
            id="bad-escape",
        ),
        pytest.param(
            "metadata.name=a\\",
            DEFAULT_FIELDS,
            "invalid field selector: invalid escape sequence: \\",
            id="trailing-backslash",
        ),
        pytest.param(
            "spec.nodeName=a",
            supported_fields("endpoints"),
            '"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"',
            id="default-conversion-message",
        ),
        pytest.param("spec.foo=a", PODS, "field label not supported: spec.foo", id="pod-conversion-message"),
        pytest.param(
            "metadata.namespace=a",
            supported_fields("nodes"),
            "field label not supported: metadata.namespace",
            id="nodes-have-no-namespace-field",
        ),
        pytest.param(
            "z=1,metadata.name=a\\",
            PODS,
            "invalid field selector: invalid escape sequence: \\",
            id="syntax-errors-before-unsupported-fields",
        ),
        pytest.param("zz=1,aa=1", PODS, "field label not supported: aa", id="terms-checked-in-sorted-order"),
    ],
)
def test_field_selector_errors(text: str, supported: frozenset[str], message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_field_selector(text, supported)
    assert caught.value.message == message


@pytest.mark.parametrize(
    ("plural", "included", "excluded"),
    [
        pytest.param(
            "pods",
            {
                "spec.nodeName",
                "spec.hostNetwork",
                "status.podIP",
                "status.nominatedNodeName",
                "metadata.namespace",
            },
            {"spec.host"},
            id="pods",
        ),
        pytest.param(
            "events",
            {"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"},
            set(),
            id="events",
        ),
        pytest.param("namespaces", {"metadata.name", "status.phase"}, {"metadata.namespace"}, id="namespaces"),
        pytest.param("nodes", {"metadata.name", "spec.unschedulable"}, {"metadata.namespace"}, id="nodes"),
        pytest.param("services", {"spec.clusterIP", "spec.type", "metadata.namespace"}, set(), id="services"),
        pytest.param("endpoints", set(DEFAULT_FIELDS), {"spec.nodeName"}, id="endpoints-default"),
        pytest.param("endpointslices", set(DEFAULT_FIELDS), set(), id="endpointslices-default"),
    ],
)
def test_supported_fields(plural: str, included: set[str], excluded: set[str]) -> None:
    fields = supported_fields(plural)
    assert included <= fields
    assert not excluded & fields


def test_field_selector_helpers() -> None:
    selector = parse_field_selector("spec.nodeName=node-a,metadata.name!=x", PODS)
    assert selector.requires_exact_match("spec.nodeName") == "node-a"
    assert selector.requires_exact_match("metadata.name") is None
    assert str(parse_field_selector("metadata.name=a\\,b", DEFAULT_FIELDS)) == "metadata.name=a\\,b"
    assert parse_field_selector("", PODS).empty
    assert field_value(POD, "spec.restartPolicy") == "Always"
    assert field_value(POD, "spec.schedulerName") == ""
