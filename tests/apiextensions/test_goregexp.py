"""Go's regexp syntax for a CRD schema's `pattern`: what `regexp.Compile` accepts, and its error, word for word."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinykube.apiextensions import formats
from tinykube.apiextensions.goregexp import go_regexp_error
from tinykube.apiextensions.schema import compile_errors


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        pytest.param("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", None, id="dns-label"),
        pytest.param(
            "(?i)abc|(?P<x>d)|(?<y>e)|\\pL\\p{Greek}\\z|\\Qa.b\\E|\\x{41}|[[:alpha:]]", None, id="re2-only-syntax"
        ),
        pytest.param("a*?", None, id="lazy"),
        pytest.param("(", "missing closing ): `(`", id="open-paren"),
        pytest.param("a)", "unexpected ): `a)`", id="close-paren"),
        pytest.param("[a", "missing closing ]: `[a`", id="open-class"),
        pytest.param("*a", "missing argument to repetition operator: `*`", id="nothing-to-repeat"),
        pytest.param("a**", "invalid nested repetition operator: `**`", id="nested-repeat"),
        pytest.param("a*+", "invalid nested repetition operator: `*+`", id="possessive"),
        pytest.param("(?=a)", "invalid or unsupported Perl syntax: `(?=`", id="lookahead"),
        pytest.param("(?<!a)", "invalid named capture: `(?<!a)`", id="lookbehind"),
        pytest.param("(?x)a", "invalid or unsupported Perl syntax: `(?x`", id="python-flag"),
        pytest.param("(a)\\1", "invalid escape sequence: `\\1`", id="backreference"),
        pytest.param("\\Z", "invalid escape sequence: `\\Z`", id="python-end"),
        pytest.param("a{1001}", "invalid repeat count: `{1001}`", id="repeat-count"),
        pytest.param("[z-a]", "invalid character class range: `z-a`", id="backwards-range"),
        pytest.param("[[:word1:]]", "invalid character class range: `[:word1:]`", id="posix-class"),
        pytest.param("a\\", "trailing backslash at end of expression: ``", id="trailing-backslash"),
    ],
)
def test_go_regexp_errors(pattern: str, expected: str | None) -> None:
    assert go_regexp_error(pattern) == (None if expected is None else f"error parsing regexp: {expected}")


# ---- Go's own answers (tools/goregexp_vectors: generated with Go's regexp package) ------------------------------

_VECTORS = Path(__file__).with_name("goregexp_vectors.jsonl.gz")
_SAMPLES = ["", "a", "ab", "AB", "bA", "a\nb", "b\n", "xyz:()*+", "12", "{1}", "Σσ", "_-,"]


def _vectors() -> list[dict[str, Any]]:
    with gzip.open(_VECTORS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_validity_and_messages_are_go_s_for_every_vector() -> None:
    wrong = [(v["pattern"], v["error"], go_regexp_error(v["pattern"])) for v in _vectors()]
    assert [w for w in wrong if w[1] != w[2]] == []


def test_translated_patterns_match_what_go_matches() -> None:
    wrong = []
    for v in _vectors():
        if v["error"] is None:
            compiled = formats.compile_re2(v["pattern"])
            got = [s for s in _SAMPLES if compiled.search(s)]
            if got != v["matches"]:
                wrong.append((v["pattern"], v["matches"], got))
    assert wrong == []


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param(r"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$", id="httproute-path"),
        pytest.param(r"^(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$", id="grpcroute-service"),
        pytest.param(r"^[a-z*+]+$", id="repeat-characters-in-a-bracket"),
    ],
)
def test_a_valid_re2_pattern_is_accepted_in_a_cel_rule(pattern: str) -> None:
    schema = {"type": "string", "x-kubernetes-validations": [{"rule": f'self.matches(r"""{pattern}""")'}]}
    assert compile_errors(schema, "spec") == []


def test_inline_flags_hold_to_the_end_of_their_group_as_in_go() -> None:
    assert formats.go_match(r"^(?i)abc$", "ABC")
    assert formats.go_match(r"a(?i)b|c", "C")  # the flag holds across | to the group's end
    assert not formats.go_match(r"(x(?i)b)B", "xBb")
    assert not formats.go_match(r"^a$", "a\n")  # $ is the end of the text without (?m)


# ---- a model of RE2's repeat rules, checked on generated patterns ------------------------------------------------

_ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "[*+]", "(a)", "(?:b)", "^", "$", "\\d", "(?i)"])
_REPEATS = st.sampled_from(["", "*", "+", "?", "*?", "{2}", "{1,3}", "{2,}"])
_ONE_REPEAT = frozenset(op + lazy for op in ("*", "+", "?", "{2}", "{1,3}", "{2,}") for lazy in ("", "?"))


@given(st.lists(st.tuples(_ATOMS, _REPEATS, _REPEATS), min_size=1, max_size=6))
def test_stacked_repeats_and_repeats_of_nothing_are_refused_like_re2(pieces: list[tuple[str, str, str]]) -> None:
    """RE2 refuses a repeat directly after a repeat (but `?` after one makes it lazy), and a repeat with nothing
    before it (a flag group is no operand); everything else built from these pieces is valid."""
    pattern = "".join(a + r1 + r2 for a, r1, r2 in pieces)
    nothing_before = True
    expected = None
    for atom, r1, r2 in pieces:
        if atom != "(?i)":
            nothing_before = False
        if (r1 or r2) and nothing_before:
            expected = "missing argument to repetition operator"
            break
        if r1 and r2 and r1 + r2 not in _ONE_REPEAT:  # `*` then `?` is one lazy star
            expected = "invalid nested repetition operator"
            break
    error = go_regexp_error(pattern)
    if expected is None:
        assert error is None, pattern
    else:
        assert error is not None and error.startswith(f"error parsing regexp: {expected}"), (pattern, error)
