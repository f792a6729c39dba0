"""hub/ is laid out by concern and its imports run one way (docs/architecture.md draws the layers).

Reads every module of hub/ and routes/ with `ast` (nothing is imported) and checks each import
against LAYERS: a folder may import its own modules and the folders below it, never one above.
Imports under `if TYPE_CHECKING:` are types only and left out."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .helpers import ROOT

# Bottom to top. runtime.py is the one composition root; routes/ is the HTTP surface above it all.
LAYERS = ["core", "config", "store", "observability", "access", "upstream", "backends", "streams", "routing",
          "search", "fetcher", "tools", "protocols", "injection", "turn", "runtime", "mcp", "cli"]
TOP_LEVEL = {"__init__", "__main__", "runtime"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in ("hub", "routes"):
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", getattr(child.test, "attr", "")) == \
                    "TYPE_CHECKING":
                for c in child.orelse:
                    visit(c)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name)
            elif isinstance(child, ast.ImportFrom):
                base = package[: len(package) - child.level + 1] if child.level else []
                module = ".".join(base + ([child.module] if child.module else []))
                for alias in child.names:
                    full = f"{module}.{alias.name}"
                    add(full if full in MODULES else module)
            visit(child)

    visit(tree)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "routes":
        return "routes"
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_folder_of_hub_has_a_layer():
    folders = {p.name for p in (ROOT / "hub").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    files = {p.stem for p in (ROOT / "hub").glob("*.py")}
    assert folders <= set(LAYERS), f"a new folder needs a place in LAYERS: {sorted(folders - set(LAYERS))}"
    assert files <= TOP_LEVEL, f"a module left at hub/'s top level belongs in a folder: {sorted(files - TOP_LEVEL)}"


def test_imports_run_down_the_layers():
    upward = []
    for module, deps in GRAPH.items():
        mine = _layer(module)
        for dep in deps:
            theirs = _layer(dep)
            if theirs == "routes" and mine != "routes":
                upward.append(f"{module} -> {dep} (hub/ never imports routes/)")
            elif mine in LAYERS and theirs in LAYERS and LAYERS.index(theirs) > LAYERS.index(mine):
                upward.append(f"{module} -> {dep} ({mine} is below {theirs})")
    assert not upward, "\n".join(sorted(upward))


def test_config_imports_nothing_else_of_the_gateway():
    outside = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() if _layer(m) == "config"
                     for d in deps if _layer(d) != "config")
    assert not outside, outside


def test_no_import_cycle_between_modules():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for dep in sorted(GRAPH.get(module, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state and (cycle := visit(module)):
            pytest.fail(" -> ".join(cycle))


def test_the_check_sees_imports():
    """The reader above finds relative and absolute imports (else every check would pass vacuously)."""
    assert "hub.config.settings" in GRAPH["hub.config.loader"]
    assert "hub.turn.pipeline" in GRAPH["hub.runtime"]
    assert any(d.startswith("hub.") for d in GRAPH["routes.app"])
