"""The house rules, read from the source with `ast` (no imports, milliseconds): layers point down, components never
import each other, and no private name crosses a module boundary.

The table below is the one statement of the layers (DESIGN.md "Layers", the README's "Layout" shows it): every
top-level unit of the `tinykube` package belongs to exactly one layer. An import may point to a lower layer, or
stay within its own unit; within the libraries, infrastructure and entry-point layers units may use each other,
but one component never imports another (what two of them need moves down).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tinykube"

# Highest first. A component is a tuple of units that form one (the apiserver serves the CRD machinery it owns).
LAYERS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("entry points", (("cli", "cli_flags", "up", "upetcd", "wiring", "testing", "signals"),)),
    ("tools", (("trace", "ui"),)),
    (
        "components",
        (("apiserver", "apiextensions"), ("controllers",), ("proxy",), ("node",), ("dns",)),
    ),
    ("libraries", (("client", "streams", "kubelet_env", "sandbox", "clusterdir"),)),
    ("infrastructure", (("store", "web", "metrics", "gcpause", "componentlog"),)),
    ("ground", (("api", "__init__"),)),
)

# Private names imported across modules on purpose, each with the reason (at most five: the house rule).
PRIVATE_ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True, slots=True)
class Place:
    layer: int
    group: int  # the component (or the layer's one group) the unit belongs to
    layer_name: str


def _places() -> dict[str, Place]:
    found: dict[str, Place] = {}
    for layer, (layer_name, groups) in enumerate(LAYERS):
        for group, units in enumerate(groups):
            for unit in units:
                found[unit] = Place(layer, group, layer_name)
    return found


PLACES = _places()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


SOURCES = sorted(PACKAGE.rglob("*.py"))
MODULES = frozenset(_module_name(path) for path in SOURCES)


def _is_module(name: str) -> bool:
    return name in MODULES


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@dataclass(frozen=True, slots=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module
    names: tuple[str, ...]  # the names taken from it (`from target import a, b`)
    line: int


@functools.cache
def _imports(path: Path) -> list[Import]:
    return _imports_in(_tree(path), _module_name(path), is_package=path.name == "__init__.py")


def _imports_in(tree: ast.Module, source: str, *, is_package: bool) -> list[Import]:
    package = source if is_package else source.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(source, alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = tuple(alias.name for alias in node.names)
            submodules = [name for name in names if _is_module(f"{target}.{name}")]
            found += [Import(source, f"{target}.{name}", (), node.lineno) for name in submodules]
            found.append(Import(source, target, tuple(n for n in names if n not in submodules), node.lineno))
    return [i for i in found if i.target == "tinykube" or i.target.startswith("tinykube.")]


def _private_attribute_uses(path: Path) -> list[tuple[str, str, int]]:
    """`module._name` where `module` is another tinykube module bound by an import in this file."""
    tree = _tree(path)
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tinykube.") and alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tinykube"):
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    uses = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound):
            continue
        if node.attr.startswith("_") and not node.attr.startswith("__"):
            uses.append((bound[node.value.id], node.attr, node.lineno))
    return uses


def test_every_unit_has_a_layer() -> None:
    units = {_unit(_module_name(path)) for path in SOURCES}
    missing = sorted(units - PLACES.keys())
    assert not missing, f"add these top-level units of tinykube to LAYERS in {__file__}: {missing}"


def _layer_violations() -> list[str]:
    found = []
    for path in SOURCES:
        for imp in _imports(path):
            here, there = _unit(imp.source), _unit(imp.target)
            if here == there or here not in PLACES or there not in PLACES:
                continue
            a, b = PLACES[here], PLACES[there]
            upward = b.layer < a.layer
            sideways = b.layer == a.layer and b.group != a.group
            if upward or sideways:
                how = f"up into {b.layer_name}" if upward else "sideways (another component)"
                found.append(f"{imp.source}:{imp.line} imports {imp.target}: {how}")
    return found


def test_imports_point_down_and_components_do_not_import_each_other() -> None:
    violations = _layer_violations()
    assert not violations, "\n".join(violations)


def _private_imports() -> list[tuple[str, str, str]]:
    found = []
    for path in SOURCES:
        for imp in _imports(path):
            for name in imp.names:
                if name.startswith("_") and not name.startswith("__"):
                    found.append((imp.source, imp.target, name))
        source = _module_name(path)
        found += [(source, target, name) for target, name, _line in _private_attribute_uses(path)]
    return found


def test_no_private_name_crosses_a_module_boundary() -> None:
    unexplained = [
        f"{source} takes {target}.{name}"
        for source, target, name in _private_imports()
        if (target, name) not in PRIVATE_ALLOWED
    ]
    assert not unexplained, "make these public where they live, or move them:\n" + "\n".join(unexplained)


def test_the_allowed_private_names_are_few_and_still_used() -> None:
    assert len(PRIVATE_ALLOWED) <= 5
    used = {(target, name) for _source, target, name in _private_imports()}
    assert set(PRIVATE_ALLOWED) <= used, f"no longer imported, drop from PRIVATE_ALLOWED: {set(PRIVATE_ALLOWED) - used}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("from tinykube.proxy import model\n", ["tinykube.proxy.model"], id="from-package-import-module"),
        pytest.param("from tinykube.api.meta import name_of\n", ["tinykube.api.meta"], id="from-module-import-name"),
        pytest.param("import tinykube.store as etcd\n", ["tinykube.store"], id="import-as"),
        pytest.param("from . import server\n", ["tinykube.dns.server"], id="relative-module"),
        pytest.param("from .server import DnsServer\n", ["tinykube.dns.server"], id="relative-name"),
        pytest.param("import dnslib\n", [], id="not-ours"),
    ],
)
def test_the_reader_resolves_imports(text: str, expected: list[str]) -> None:
    """The checks above are only as good as this reader: it sees each form of import as the module it names."""
    imports = [
        i for i in _imports_in(ast.parse(text), "tinykube.dns", is_package=True) if i.names or i.target in expected
    ]
    assert [i.target for i in imports] == expected
