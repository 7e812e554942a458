"""Go's regexp syntax for a CRD schema's `pattern`: what `regexp.Compile` accepts, and its error, word for word."""

from __future__ import annotations

import pytest

from tinykube.apiextensions.goregexp import go_regexp_error


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
