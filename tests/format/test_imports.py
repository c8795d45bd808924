"""The format core imports no module above it and holds no import cycle (compression.py and
lz4frame.py once imported each other through their shared scratch buffer)."""

from __future__ import annotations

import ast
from pathlib import Path

import kseg.format

FORMAT = Path(kseg.format.__file__).parent


def _graph() -> dict[str, set[str]]:
    """module -> the kseg.format modules it imports (``from kseg.format import x`` and
    ``from kseg.format.x import y``; a name that is no module is never a graph node)."""
    graph: dict[str, set[str]] = {}
    for path in FORMAT.rglob("*.py"):
        mod = ".".join(path.relative_to(FORMAT).with_suffix("").parts)
        deps = graph.setdefault(mod, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not node.level, f"{mod}: relative import (kseg imports absolutely)"
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("kseg.") and name != "kseg.format":
                    assert name.startswith("kseg.format."), f"{mod} imports above: {name}"
                    deps.add(name.removeprefix("kseg.format."))
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
