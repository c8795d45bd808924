"""The format core imports no module above it and holds no import cycle (compression.py and
lz4frame.py once imported each other through their shared scratch buffer)."""

from __future__ import annotations

import ast
from pathlib import Path

import kseg.format

FORMAT = Path(kseg.format.__file__).parent


def _graph() -> dict[str, set[str]]:
    """module -> the kseg.format modules it imports (relative imports: ``from . import x``,
    ``from .x import y``)."""
    graph: dict[str, set[str]] = {}
    for path in FORMAT.rglob("*.py"):
        mod = ".".join(path.relative_to(FORMAT).with_suffix("").parts)
        pkg = mod.rpartition(".")[0]
        deps = graph.setdefault(mod, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 or pkg, f"{mod} imports above kseg.format"
                base = pkg if node.level == 1 else ""
                if node.module:
                    deps.add(f"{base}.{node.module}".lstrip("."))
                else:
                    deps.update(f"{base}.{a.name}".lstrip(".") for a in node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                names = (
                    [node.module]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                )
                assert not any(n and n.startswith("kseg") for n in names), f"{mod}: {names}"
    return graph


def test_format_has_no_import_cycle():
    graph = _graph()
    assert "compression" in graph["batch"] and "scratch" in graph["lz4frame"]  # it sees edges
    state: dict[str, int] = {}

    def visit(mod: str, path: list[str]) -> None:
        state[mod] = 1
        for dep in graph.get(mod, ()):
            if state.get(dep) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path, mod, dep]))
            if dep in graph and not state.get(dep):
                visit(dep, [*path, mod])
        state[mod] = 2

    for mod in graph:
        if not state.get(mod):
            visit(mod, [])
