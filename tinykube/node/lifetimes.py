"""How long a simulated container runs and how it ends, read from its command (pure).

The simulated runtime executes nothing, so it reads what a container says it will do where that is plain: `sleep N`
ends after N seconds with 0, `exit N` ends at once with N, `true` (and `:`, `echo …`) with 0, `false` with 1, also
inside `sh -c '…'` and in a sequence of them joined by `;`, `&&` or `||` (each step as a shell runs it). Anything
else (no command: the image's own, `pause`, a server, `sleep infinity`, a script with `if` or variables) runs until
the container is stopped, as kwok's containers do.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from typing import Any

Object = dict[str, Any]
SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
SUCCEEDING = frozenset({"true", ":", "echo", "printf"})
OPERATORS = frozenset({";", "&&", "||"})
SLEEP_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True, slots=True)
class Lifetime:
    """A run that ends on its own: after `seconds`, with `exit_code`."""

    seconds: float
    exit_code: int


def lifetime(container: Object) -> Lifetime | None:
    """How the container's run ends, or None: it runs until stopped."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not argv:
        return None
    if _base(argv[0]) in SHELLS:
        return _script(argv[2]) if len(argv) >= 3 and argv[1] == "-c" else None
    return _steps([argv])


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _script(text: str) -> Lifetime | None:
    """A `sh -c` script made only of plain steps."""
    lexer = shlex.shlex(text.replace("\n", ";"), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote
        return None
    steps: list[list[str]] = [[]]
    for token in tokens:
        if token in OPERATORS:
            steps.append([token])
        elif any(ch in token for ch in "$`()<>*?[]{}=") or (token and token[0] in "&|"):
            return None  # expansions, redirections, globs, assignments, background jobs: not plain
        else:
            steps[-1].append(token)
    return _steps(steps)


def _steps(steps: list[list[str]]) -> Lifetime | None:
    """Run the steps as a shell would: `&&` runs the next only after a 0, `||` only after a failure."""
    seconds, code = 0.0, 0
    for step in steps:
        operator = step[0] if step and step[0] in OPERATORS else ";"
        words = step[1:] if step and step[0] in OPERATORS else step
        if not words:
            if operator != ";":
                return None  # `a && ` with nothing after it is a syntax error
            continue
        if (operator == "&&" and code != 0) or (operator == "||" and code == 0):
            continue
        name, rest = _base(words[0]), words[1:]
        if name == "exit":
            return Lifetime(seconds, _exit_code(rest, code)) if len(rest) <= 1 and _numeric(rest) else None
        if name == "sleep":
            took = _sleep_seconds(rest)
            if took is None or math.isinf(took):
                return None
            seconds, code = seconds + took, 0
        elif name in SUCCEEDING:
            code = 0
        elif name == "false" and not rest:
            code = 1
        else:
            return None
    return Lifetime(seconds, code)


def _numeric(words: list[str]) -> bool:
    return all(w.isdigit() for w in words)


def _exit_code(words: list[str], last: int) -> int:
    return int(words[0]) % 256 if words else last


def _sleep_seconds(words: list[str]) -> float | None:
    """GNU/busybox `sleep`: the sum of its operands, each a number with an optional s/m/h/d; `infinity` is for ever."""
    if not words:
        return None
    total = 0.0
    for word in words:
        unit = SLEEP_UNITS.get(word[-1], 0.0) if word else 0.0
        number = word[:-1] if unit else word
        try:
            value = float(number) * (unit or 1.0)
        except ValueError:
            return None
        if value < 0 or math.isnan(value):
            return None
        total += value
    return total
