"""The JSONPath subset a CRD's `additionalPrinterColumns`, `selectableFields` and scale paths use.

Printer columns take client-go's template syntax without its braces (`.status.replicas`, `.spec.items[0].name`,
`.status.conditions[?(@.type=="Ready")].status`, `.metadata.labels.app`); selectable fields and scale paths are
plain field paths. A path that finds nothing gives no values, as upstream's `AllowMissingKeys(true)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

_STEP = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$/]+)            # .name
      | \[(?P<index>-?\d+)\]                       # [0]
      | \[(?P<all>\*)\]                            # [*]
      | \[\?\(@\.(?P<key>[A-Za-z0-9_\-.]+)\s*(?P<op>==|!=)\s*(?P<quote>["'])(?P<value>[^"']*)(?P=quote)\)\]
      | \['(?P<quoted>[^']+)'\]                    # ['a.b']
    """,
    re.VERBOSE,
)


class JSONPathError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Step:
    kind: str  # field | index | all | filter
    name: str = ""
    index: int = 0
    key: tuple[str, ...] = ()
    equal: bool = True
    value: str = ""


def parse(path: str) -> tuple[Step, ...]:
    """Steps of a path such as `.status.conditions[?(@.type=="Ready")].status`; JSONPathError if it is not one."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[Step] = []
    at = 0
    while at < len(text):
        found = _STEP.match(text, at)
        if found is None:
            raise JSONPathError(f"unrecognized JSONPath {path!r} at {text[at:]!r}")
        if found["field"] is not None:
            steps.append(Step("field", found["field"]))
        elif found["quoted"] is not None:
            steps.append(Step("field", found["quoted"]))
        elif found["index"] is not None:
            steps.append(Step("index", index=int(found["index"])))
        elif found["all"] is not None:
            steps.append(Step("all"))
        else:
            steps.append(
                Step("filter", key=tuple(found["key"].split(".")), equal=found["op"] == "==", value=found["value"])
            )
        at = found.end()
    if not steps:
        raise JSONPathError(f"unrecognized JSONPath {path!r}")
    return tuple(steps)


def find(steps: tuple[Step, ...], obj: Any) -> list[Any]:
    """Every value the path leads to in `obj` (none where keys are missing)."""
    return list(_walk(steps, 0, obj))


def _walk(steps: tuple[Step, ...], at: int, node: Any) -> Iterator[Any]:
    if at == len(steps):
        yield node
        return
    step = steps[at]
    if step.kind == "field":
        if isinstance(node, dict) and step.name in node:
            yield from _walk(steps, at + 1, node[step.name])
    elif step.kind == "index":
        if isinstance(node, list) and -len(node) <= step.index < len(node):
            yield from _walk(steps, at + 1, node[step.index])
    elif step.kind == "all":
        items = node if isinstance(node, list) else list(node.values()) if isinstance(node, dict) else []
        for item in items:
            yield from _walk(steps, at + 1, item)
    elif isinstance(node, list):
        for item in node:
            value: Any = item
            for key in step.key:
                value = value.get(key) if isinstance(value, dict) else None
            if (_text(value) == step.value) == step.equal and value is not None:
                yield from _walk(steps, at + 1, item)


def _text(value: Any) -> str:
    """A value as client-go's template printing writes it: strings bare, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return orjson.dumps(value).decode()


text = _text


def field_path(steps: tuple[Step, ...]) -> str | None:
    """`.spec.replicas` for a path of fields only (what scale paths and selectable fields must be); else None."""
    if any(step.kind != "field" for step in steps):
        return None
    return "".join(f".{step.name}" for step in steps)
